.target amx
.input 0 @64 s8[4,2,5]
.input 1 @128 s32[]
.input 2 @192 s32[]
.output 0 @256 s32[]
vbroadcastss(dst=0, addr=128)
vbroadcastss(dst=1, addr=192)
vpmaxsd(dst=0, a=0, b=1)
vmovdqu8_store(n=4, src=0, addr=256)
