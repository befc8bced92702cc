.target amx
.input 0 @64 s32[2,4,4]
.input 1 @192 u8[]
.output 0 @256 u8[3]
vmovdqu8_load(n=1, dst=0, addr=192)
vmovdqu8_store(n=1, src=0, addr=256)
vmovdqu8_store(n=1, src=0, addr=257)
vmovdqu8_store(n=1, src=0, addr=258)
