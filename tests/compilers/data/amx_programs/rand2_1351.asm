.target amx
.input 0 @64 s32[2,3,1]
.output 0 @128 s32[1,1,1]
vbroadcastss(dst=0, addr=80)
vmovdqu8_store(n=4, src=0, addr=128)
