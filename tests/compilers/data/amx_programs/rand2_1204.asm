.target amx
.input 0 @64 f32[]
.input 1 @128 bf16[3,1,5]
.input 2 @192 bf16[3,1,3]
.input 3 @256 bf16[3,1,1]
.input 4 @320 s8[2,3,1]
.input 5 @384 s8[2,3,1]
.output 0 @448 s8[2,3,1]
vmovdqu8_load(n=6, dst=0, addr=384)
vmovdqu8_load(n=6, dst=1, addr=320)
vpmaxsb(dst=0, a=0, b=1)
vmovdqu8_store(n=6, src=0, addr=448)
