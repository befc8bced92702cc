.target amx
.input 0 @64 s8[1,1,4]
.input 1 @128 s32[4]
.input 2 @192 s32[4]
.output 0 @256 s8[1,1,4]
vmovdqu8_load(n=1, dst=0, addr=67)
vmovdqu8_store(n=1, src=0, addr=320)
vmovdqu8_load(n=1, dst=0, addr=66)
vmovdqu8_store(n=1, src=0, addr=321)
vmovdqu8_load(n=2, dst=0, addr=320)
vmovdqu8_store(n=2, src=0, addr=256)
vmovdqu8_load(n=1, dst=0, addr=65)
vmovdqu8_store(n=1, src=0, addr=320)
vbroadcastss(dst=0, addr=64)
vmovdqu8_store(n=1, src=0, addr=321)
vmovdqu8_load(n=2, dst=0, addr=320)
vmovdqu8_store(n=2, src=0, addr=258)
