.target amx
.input 0 @64 s8[3,5,1]
.input 1 @128 s8[3,4,1]
.input 2 @192 s8[2]
.input 3 @256 s8[1]
.output 0 @320 s8[3]
vmovdqu8_load(n=1, dst=0, addr=256)
vmovdqu8_store(n=1, src=0, addr=320)
vmovdqu8_load(n=1, dst=0, addr=192)
vmovdqu8_store(n=1, src=0, addr=321)
vmovdqu8_load(n=1, dst=0, addr=193)
vmovdqu8_store(n=1, src=0, addr=322)
