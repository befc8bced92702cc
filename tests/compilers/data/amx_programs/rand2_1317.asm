.target amx
.input 0 @64 f32[4]
.input 1 @128 s8[5,2,5]
.output 0 @192 s8[2]
vbroadcastss(dst=0, addr=171)
vmovdqu8_store(n=2, src=0, addr=192)
