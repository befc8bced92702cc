.target amx
.input 0 @64 s32[]
.output 0 @128 f32[1,4]
vbroadcastss(dst=0, addr=64)
vcvtdq2ps(dst=0, src=0)
vmovdqu8_store(n=16, src=0, addr=128)
