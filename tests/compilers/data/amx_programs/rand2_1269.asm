.target amx
.input 0 @64 s32[5,2,2]
.output 0 @192 s32[5,2,2]
tileloadd(rows=4, colsb=20, stride=20, t=0, addr=64)
tilestored(rows=4, colsb=20, stride=20, t=0, addr=192)
