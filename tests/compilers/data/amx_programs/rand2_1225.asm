.target amx
.input 0 @64 s32[2,2]
.input 1 @128 s32[2,2]
.output 0 @192 s32[2,2]
vmovdqu8_load(n=16, dst=0, addr=64)
vmovdqu8_load(n=16, dst=1, addr=128)
vpsubd(dst=2, a=0, b=1)
vpsubd(dst=0, a=1, b=0)
vpmaxsd(dst=0, a=2, b=0)
vmovdqu8_store(n=16, src=0, addr=192)
