.target amx
.input 0 @64 u8[]
.output 0 @128 u8[1]
vmovdqu8_load(n=1, dst=0, addr=64)
vmovdqu8_store(n=1, src=0, addr=128)
