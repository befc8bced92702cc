.target amx
.input 0 @64 u8[16,64]
.input 1 @1088 s8[32,64]{0,1:T(4,1)}
.output 0 @3136 s32[16,32]{1,0:T(16,16)}
tilezero(t=0)
tileloadd(rows=16, colsb=64, stride=64, t=2, addr=64)
tileloadd(rows=16, colsb=64, stride=128, t=1, addr=1088)
tdpbusd(m=16, k=16, n=16, c=0, a=2, b=1)
tilestored(rows=16, colsb=64, stride=64, t=0, addr=3136)
tilezero(t=0)
tileloadd(rows=16, colsb=64, stride=128, t=1, addr=1152)
tdpbusd(m=16, k=16, n=16, c=0, a=2, b=1)
tilestored(rows=16, colsb=64, stride=64, t=0, addr=4160)
