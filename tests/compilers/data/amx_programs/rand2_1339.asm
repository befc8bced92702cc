.target amx
.input 0 @64 bf16[39]
.input 1 @192 bf16[2]
.input 2 @256 bf16[3]
.input 3 @320 s32[5]
.input 4 @384 s32[1]
.input 5 @448 s32[1]
.output 0 @512 s32[7]
.const @576 ffffffff000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
vbroadcastss(dst=0, addr=384)
vmovdqu8_store(n=4, src=0, addr=512)
vbroadcastss(dst=0, addr=320)
vmovups_load(dst=1, addr=576)
vpmulld(dst=0, a=0, b=1)
vmovdqu8_store(n=4, src=0, addr=516)
vbroadcastss(dst=0, addr=324)
vpmulld(dst=0, a=0, b=1)
vmovdqu8_store(n=4, src=0, addr=520)
vbroadcastss(dst=0, addr=328)
vpmulld(dst=0, a=0, b=1)
vmovdqu8_store(n=4, src=0, addr=524)
vbroadcastss(dst=0, addr=332)
vpmulld(dst=0, a=0, b=1)
vmovdqu8_store(n=4, src=0, addr=528)
vbroadcastss(dst=0, addr=336)
vpmulld(dst=0, a=0, b=1)
vmovdqu8_store(n=4, src=0, addr=532)
vbroadcastss(dst=0, addr=448)
vmovdqu8_store(n=4, src=0, addr=536)
