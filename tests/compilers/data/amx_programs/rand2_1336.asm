.target amx
.input 0 @64 s8[5]
.input 1 @128 s8[5]
.input 2 @192 s32[5,2]
.output 0 @256 s32[1,2]
vmovdqu8_load(n=8, dst=0, addr=216)
vmovdqu8_store(n=8, src=0, addr=256)
