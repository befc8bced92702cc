.target amx
.input 0 @64 s8[19]
.input 1 @128 s8[19]
.output 0 @192 s8[19]
vmovdqu8_load(n=19, dst=0, addr=64)
vmovdqu8_load(n=19, dst=1, addr=128)
vpmaxsb(dst=0, a=0, b=1)
vmovdqu8_store(n=19, src=0, addr=192)
