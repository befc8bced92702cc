.target amx
.input 0 @64 f32[5]
.output 0 @128 f32[]
vbroadcastss(dst=0, addr=64)
vmovdqu8_store(n=4, src=0, addr=128)
