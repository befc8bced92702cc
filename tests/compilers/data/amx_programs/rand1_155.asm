.target amx
.input 0 @64 f32[4,2,2]
.input 1 @128 f32[4,2,2]
.output 0 @192 f32[4,2,2]
vmovups_load(dst=0, addr=128)
vmovups_load(dst=1, addr=64)
vmulps(dst=0, a=0, b=1)
vmovups_store(src=0, addr=192)
