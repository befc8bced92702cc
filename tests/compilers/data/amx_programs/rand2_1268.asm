.target amx
.input 0 @64 s8[1,4]
.input 1 @128 s8[3]
.output 0 @192 s8[3]
vmovdqu8_load(n=1, dst=0, addr=130)
vmovdqu8_store(n=1, src=0, addr=192)
vmovdqu8_load(n=1, dst=0, addr=129)
vmovdqu8_store(n=1, src=0, addr=193)
vmovdqu8_load(n=1, dst=0, addr=128)
vmovdqu8_store(n=1, src=0, addr=194)
