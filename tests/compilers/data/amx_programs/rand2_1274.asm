.target amx
.input 0 @64 u8[2]
.output 0 @128 u8[2,1]
vmovdqu8_load(n=2, dst=0, addr=64)
vmovdqu8_store(n=2, src=0, addr=128)
