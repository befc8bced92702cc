.target amx
.input 0 @64 s32[2,3,2]
.input 1 @128 u8[5]
.input 2 @192 u8[5]
.output 0 @256 u8[5]
vmovdqu8_load(n=5, dst=0, addr=128)
vmovdqu8_load(n=5, dst=1, addr=192)
vpminub(dst=0, a=0, b=1)
vmovdqu8_store(n=5, src=0, addr=256)
