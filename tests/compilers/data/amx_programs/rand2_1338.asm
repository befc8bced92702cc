.target amx
.input 0 @64 s8[4]
.output 0 @128 s8[3,4]
vbroadcastss(dst=0, addr=64)
vmovdqu8_store(n=12, src=0, addr=128)
