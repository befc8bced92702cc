.target amx
.input 0 @64 s32[1,3,4]
.input 1 @128 s32[1,3,4]
.input 2 @192 s32[3,4,1]
.output 0 @256 s32[3,4,1]
tileloadd(rows=3, colsb=16, stride=16, t=0, addr=192)
tilestored(rows=3, colsb=16, stride=16, t=0, addr=256)
