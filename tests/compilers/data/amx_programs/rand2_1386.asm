.target amx
.input 0 @64 s32[3,5]
.input 1 @128 s32[3,5]
.output 0 @192 s32[3,5]
tileloadd(rows=3, colsb=20, stride=20, t=0, addr=64)
tilestored(rows=3, colsb=20, stride=20, t=0, addr=192)
