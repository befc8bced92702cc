.target amx
.input 0 @64 u8[35,1]
.output 0 @128 u8[5,7]
vmovdqu8_load(n=35, dst=0, addr=64)
vmovdqu8_store(n=35, src=0, addr=128)
