.target amx
.input 0 @64 f32[1,1]
.input 1 @128 f32[1,1]
.output 0 @192 f32[1,1]
vbroadcastss(dst=0, addr=64)
vbroadcastss(dst=1, addr=128)
vaddps(dst=0, a=0, b=1)
vmovdqu8_store(n=4, src=0, addr=192)
