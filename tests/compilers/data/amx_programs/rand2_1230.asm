.target amx
.input 0 @64 s32[6,4]
.input 1 @192 f32[6,4]
.output 0 @320 f32[6,4]
vmovups_load(dst=0, addr=64)
vcvtdq2ps(dst=0, src=0)
vaddps_mem(dst=0, a=0, addr=192)
vmovdqu8_store(n=24, src=0, addr=320)
vmovups_load(dst=0, addr=88)
vcvtdq2ps(dst=0, src=0)
vaddps_mem(dst=0, a=0, addr=216)
vmovdqu8_store(n=24, src=0, addr=344)
vmovdqu8_load(n=24, dst=1, addr=240)
vmovdqu8_load(n=24, dst=0, addr=112)
vcvtdq2ps(dst=0, src=0)
vaddps(dst=0, a=1, b=0)
vmovdqu8_store(n=24, src=0, addr=368)
vmovdqu8_load(n=24, dst=1, addr=264)
vmovdqu8_load(n=24, dst=0, addr=136)
vcvtdq2ps(dst=0, src=0)
vaddps(dst=0, a=1, b=0)
vmovdqu8_store(n=24, src=0, addr=392)
