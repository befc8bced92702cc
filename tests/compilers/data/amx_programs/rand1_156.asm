.target amx
.input 0 @64 s32[5,2]
.input 1 @128 s32[10]
.output 0 @192 s32[10]
.const @256 149bd95de59315d8b1aaab6eef30d7adff000000020000000100000000000080020000000aaea663000000000000000000000000000000000000000000000000
vmovdqu8_load(n=40, dst=0, addr=64)
vmovdqu8_load(n=40, dst=1, addr=128)
vpmaxsd(dst=0, a=0, b=1)
vmovups_load(dst=1, addr=256)
vpaddd(dst=0, a=0, b=1)
vmovdqu8_store(n=40, src=0, addr=192)
