.target amx
.input 0 @64 s8[33]
.input 1 @128 bf16[]
.output 0 @192 bf16[1]
vmovdqu8_load(n=2, dst=0, addr=128)
vmovdqu8_store(n=2, src=0, addr=192)
