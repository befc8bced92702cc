.target amx
.input 0 @64 s8[5]
.input 1 @128 s8[5]
.output 0 @192 s8[5]
vmovdqu8_load(n=5, dst=0, addr=128)
vmovdqu8_load(n=5, dst=1, addr=64)
vpsubb(dst=0, a=0, b=1)
vmovdqu8_store(n=5, src=0, addr=192)
