.target amx
.input 0 @64 s8[3,5,2]
.input 1 @128 s8[3,5,2]
.input 2 @192 s8[1,4]
.output 0 @256 s8[1,4]
vmovdqu8_load(n=1, dst=0, addr=195)
vmovdqu8_store(n=1, src=0, addr=320)
vmovdqu8_load(n=1, dst=0, addr=194)
vmovdqu8_store(n=1, src=0, addr=321)
vmovdqu8_load(n=2, dst=0, addr=320)
vmovdqu8_store(n=2, src=0, addr=256)
vmovdqu8_load(n=1, dst=0, addr=193)
vmovdqu8_store(n=1, src=0, addr=320)
vbroadcastss(dst=0, addr=192)
vmovdqu8_store(n=1, src=0, addr=321)
vmovdqu8_load(n=2, dst=0, addr=320)
vmovdqu8_store(n=2, src=0, addr=258)
