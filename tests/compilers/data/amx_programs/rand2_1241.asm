.target amx
.input 0 @64 s32[5,1,2]
.input 1 @128 s32[]
.input 2 @192 s32[]
.input 3 @256 u8[3]
.output 0 @320 u8[3]
vmovdqu8_load(n=3, dst=0, addr=256)
vmovdqu8_store(n=3, src=0, addr=320)
