.target amx
.input 0 @64 u8[2,2,4]
.output 0 @128 u8[2,2,4]
vmovdqu8_load(n=16, dst=0, addr=64)
vmovdqu8_store(n=16, src=0, addr=128)
