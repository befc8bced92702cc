.target amx
.input 0 @64 s32[1]
.input 1 @128 s32[1]
.output 0 @192 s32[1]
vbroadcastss(dst=0, addr=128)
vmovdqu8_store(n=4, src=0, addr=192)
