.target amx
.input 0 @64 u8[4,3]
.input 1 @128 u8[4,3]
.input 2 @192 u8[]
.output 0 @256 u8[12,1]
vmovdqu8_load(n=12, dst=0, addr=128)
vmovdqu8_store(n=12, src=0, addr=256)
