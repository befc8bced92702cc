.target amx
.input 0 @64 s8[3]
.output 0 @128 s8[10]
.const @133 ff819d8079
.const @195 01
.const @196 4a
vmovdqu8_load(n=1, dst=0, addr=64)
vmovdqu8_store(n=1, src=0, addr=192)
vmovdqu8_load(n=1, dst=0, addr=65)
vmovdqu8_store(n=1, src=0, addr=193)
vmovdqu8_load(n=1, dst=0, addr=66)
vmovdqu8_store(n=1, src=0, addr=194)
vmovdqu8_load(n=5, dst=0, addr=192)
vmovdqu8_store(n=5, src=0, addr=128)
