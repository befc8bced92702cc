.target amx
.input 0 @64 bf16[2]
.input 1 @128 s32[2,1]
.output 0 @192 s32[2,1]
vmovdqu8_load(n=8, dst=0, addr=128)
vmovdqu8_store(n=8, src=0, addr=192)
