.target amx
.input 0 @64 s8[1,3,3]
.output 0 @128 s8[1,3,3]
vbroadcastss(dst=0, addr=64)
vmovdqu8_store(n=3, src=0, addr=128)
vbroadcastss(dst=0, addr=67)
vmovdqu8_store(n=3, src=0, addr=131)
vmovdqu8_load(n=3, dst=0, addr=70)
vmovdqu8_store(n=3, src=0, addr=134)
