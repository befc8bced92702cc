.target amx
.input 0 @64 s8[1]
.output 0 @128 s8[4]
.const @128 8686
.const @192 86
vmovdqu8_load(n=1, dst=0, addr=64)
vmovdqu8_store(n=1, src=0, addr=193)
vmovdqu8_load(n=2, dst=0, addr=192)
vmovdqu8_store(n=2, src=0, addr=130)
