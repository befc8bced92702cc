.target amx
.input 0 @64 s8[3,1]
.input 1 @128 s8[3,1]
.output 0 @192 s8[3,1]
vmovdqu8_load(n=3, dst=0, addr=128)
vmovdqu8_load(n=3, dst=1, addr=64)
vpsubb(dst=0, a=0, b=1)
vmovdqu8_store(n=3, src=0, addr=192)
