.target amx
.input 0 @64 bf16[1,2]
.output 0 @128 bf16[5,2]
.const @138 f6bd06bef53b003e2dbe
.const @192 afc2
.const @194 003f
.const @200 5abf
vbroadcastss(dst=0, addr=64)
vmovdqu8_store(n=2, src=0, addr=196)
vmovdqu8_load(n=2, dst=0, addr=66)
vmovdqu8_store(n=2, src=0, addr=198)
vmovdqu8_load(n=10, dst=0, addr=192)
vmovdqu8_store(n=10, src=0, addr=128)
