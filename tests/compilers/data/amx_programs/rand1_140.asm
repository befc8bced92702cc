.target amx
.input 0 @64 s32[5,4]
.output 0 @192 s32[4,1,5]
tileloadd(rows=5, colsb=4, stride=16, t=0, addr=64)
tilestored(rows=5, colsb=4, stride=4, t=0, addr=320)
tileloadd(rows=5, colsb=4, stride=16, t=0, addr=68)
tilestored(rows=5, colsb=4, stride=4, t=0, addr=340)
tileloadd(rows=2, colsb=20, stride=20, t=1, addr=320)
tilestored(rows=2, colsb=20, stride=20, t=1, addr=192)
tileloadd(rows=5, colsb=4, stride=16, t=0, addr=72)
tilestored(rows=5, colsb=4, stride=4, t=0, addr=320)
tileloadd(rows=5, colsb=4, stride=16, t=0, addr=76)
tilestored(rows=5, colsb=4, stride=4, t=0, addr=340)
tileloadd(rows=2, colsb=20, stride=20, t=1, addr=320)
tilestored(rows=2, colsb=20, stride=20, t=1, addr=232)
