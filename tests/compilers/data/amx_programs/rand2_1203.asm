.target amx
.input 0 @64 s8[1,3]
.input 1 @128 s32[1,2]
.output 0 @192 s32[1,2]
vmovdqu8_load(n=8, dst=0, addr=128)
vmovdqu8_store(n=8, src=0, addr=192)
