.target amx
.input 0 @64 bf16[5,4]
.input 1 @128 f32[]
.input 2 @192 u8[3]
.input 3 @256 u8[3]
.input 4 @320 u8[3]
.output 0 @384 u8[3]
vmovdqu8_load(n=3, dst=0, addr=256)
vmovdqu8_load(n=3, dst=1, addr=192)
vpmaxub(dst=1, a=0, b=1)
vmovdqu8_load(n=3, dst=0, addr=320)
vpminub(dst=0, a=0, b=1)
vmovdqu8_store(n=3, src=0, addr=384)
