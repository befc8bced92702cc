.target amx
.input 0 @64 s8[]
.input 1 @128 s8[]
.output 0 @192 s8[]
vmovdqu8_load(n=1, dst=1, addr=128)
vmovdqu8_load(n=1, dst=0, addr=64)
vpminsb(dst=0, a=1, b=0)
vpaddb(dst=0, a=0, b=1)
vmovdqu8_store(n=1, src=0, addr=192)
