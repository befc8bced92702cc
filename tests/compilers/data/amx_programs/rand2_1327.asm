.target amx
.input 0 @64 s8[1,3]
.input 1 @128 s8[1,1,5]
.output 0 @192 s8[1,1,5]
vmovdqu8_load(n=5, dst=0, addr=128)
vmovdqu8_store(n=5, src=0, addr=192)
