.target amx
.input 0 @64 s32[]
.input 1 @128 s32[]
.input 2 @192 bf16[5]
.input 3 @256 bf16[]
.output 0 @320 bf16[3]
vmovdqu8_load(n=6, dst=0, addr=192)
vmovdqu8_store(n=6, src=0, addr=320)
