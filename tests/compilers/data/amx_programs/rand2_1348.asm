.target amx
.input 0 @64 s8[3]
.input 1 @128 s32[2]
.input 2 @192 bf16[5,2,3]
.output 0 @256 s32[2]
.const @320 ffffffffffffffff0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
vmovdqu8_load(n=8, dst=1, addr=128)
vmovups_load(dst=0, addr=320)
vpmulld(dst=0, a=1, b=0)
vpmaxsd(dst=0, a=1, b=0)
vpmulld(dst=0, a=0, b=1)
vmovdqu8_store(n=8, src=0, addr=256)
