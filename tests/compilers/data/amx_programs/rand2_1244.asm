.target amx
.input 0 @64 s32[2]
.output 0 @128 s32[2]
.const @192 ffffffffffffffff0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
vmovdqu8_load(n=8, dst=0, addr=64)
vmovups_load(dst=1, addr=192)
vpmulld(dst=2, a=0, b=1)
vpmaxsd(dst=0, a=0, b=2)
vpmulld(dst=0, a=0, b=1)
vmovdqu8_store(n=8, src=0, addr=128)
