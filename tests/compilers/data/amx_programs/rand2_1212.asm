.target amx
.input 0 @64 s32[2,2,3]
.input 1 @128 s32[2,2,3]
.output 0 @192 s32[2,2,3]
vmovdqu8_load(n=16, dst=0, addr=64)
vmovdqu8_load(n=16, dst=1, addr=128)
vpminsd(dst=0, a=0, b=1)
vmovdqu8_store(n=16, src=0, addr=192)
vmovdqu8_load(n=16, dst=0, addr=80)
vmovdqu8_load(n=16, dst=1, addr=144)
vpminsd(dst=0, a=0, b=1)
vmovdqu8_store(n=16, src=0, addr=208)
vmovdqu8_load(n=16, dst=0, addr=96)
vmovdqu8_load(n=16, dst=1, addr=160)
vpminsd(dst=0, a=0, b=1)
vmovdqu8_store(n=16, src=0, addr=224)
