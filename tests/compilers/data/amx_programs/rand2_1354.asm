.target amx
.input 0 @64 u8[2,2,5]
.input 1 @128 u8[2,2,5]
.input 2 @192 bf16[1,1]
.input 3 @256 bf16[3,1,39]
.input 4 @512 bf16[39,3]
.output 0 @768 bf16[1,1]
vmovdqu8_load(n=2, dst=0, addr=192)
vmovdqu8_store(n=2, src=0, addr=768)
