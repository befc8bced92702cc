.target amx
.input 0 @64 s32[3]
.output 0 @128 s32[3]
.const @192 ffffffffffffffffffffffff00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
vmovdqu8_load(n=12, dst=0, addr=64)
vmovups_load(dst=1, addr=192)
vpmulld(dst=0, a=0, b=1)
vmovdqu8_store(n=12, src=0, addr=128)
