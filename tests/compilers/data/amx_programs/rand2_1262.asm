.target amx
.input 0 @64 s32[]
.input 1 @128 s32[3,2,3]
.output 0 @256 s32[2,3,3]
vmovups_load(dst=0, addr=128)
vmovdqu8_store(n=12, src=0, addr=384)
vmovdqu8_load(n=12, dst=0, addr=152)
vmovdqu8_store(n=12, src=0, addr=396)
vmovdqu8_load(n=12, dst=0, addr=176)
vmovdqu8_store(n=12, src=0, addr=408)
tileloadd(rows=3, colsb=12, stride=12, t=0, addr=384)
tilestored(rows=3, colsb=12, stride=12, t=0, addr=256)
vmovdqu8_load(n=12, dst=0, addr=140)
vmovdqu8_store(n=12, src=0, addr=384)
vmovdqu8_load(n=12, dst=0, addr=164)
vmovdqu8_store(n=12, src=0, addr=396)
vmovdqu8_load(n=12, dst=0, addr=188)
vmovdqu8_store(n=12, src=0, addr=408)
tileloadd(rows=3, colsb=12, stride=12, t=0, addr=384)
tilestored(rows=3, colsb=12, stride=12, t=0, addr=292)
