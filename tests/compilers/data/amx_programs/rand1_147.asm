.target amx
.input 0 @64 s8[3,4,5]
.output 0 @128 s8[1,1,1]
vbroadcastss(dst=0, addr=96)
vmovdqu8_store(n=1, src=0, addr=128)
