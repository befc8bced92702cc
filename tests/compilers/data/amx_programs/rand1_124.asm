.target amx
.input 0 @64 f32[4,5,1]
.output 0 @192 f32[1,2,1,2]
vbroadcastss(dst=0, addr=92)
vmovdqu8_store(n=8, src=0, addr=192)
vbroadcastss(dst=0, addr=132)
vmovdqu8_store(n=8, src=0, addr=200)
