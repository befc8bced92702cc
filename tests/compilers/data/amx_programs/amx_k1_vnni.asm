.target amx
.input 0 @64 u8[32,64]
.input 1 @2112 s8[32,64]{0,1:T(4,1)}
.output 0 @4160 s32[32,32]{1,0:T(16,16)}
tilezero(t=0)
tileloadd(rows=16, colsb=64, stride=64, t=1, addr=64)
tileloadd(rows=16, colsb=64, stride=128, t=2, addr=2112)
tdpbusd(m=16, k=16, n=16, c=0, a=1, b=2)
tilestored(rows=16, colsb=64, stride=64, t=0, addr=4160)
tilezero(t=0)
tileloadd(rows=16, colsb=64, stride=128, t=3, addr=2176)
tdpbusd(m=16, k=16, n=16, c=0, a=1, b=3)
tilestored(rows=16, colsb=64, stride=64, t=0, addr=5184)
tilezero(t=0)
tileloadd(rows=16, colsb=64, stride=64, t=1, addr=1088)
tdpbusd(m=16, k=16, n=16, c=0, a=1, b=2)
tilestored(rows=16, colsb=64, stride=64, t=0, addr=6208)
tilezero(t=0)
tdpbusd(m=16, k=16, n=16, c=0, a=1, b=3)
tilestored(rows=16, colsb=64, stride=64, t=0, addr=7232)
