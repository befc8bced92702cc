.target amx
.input 0 @64 s32[3]
.input 1 @128 s32[3,2]
.input 2 @192 s32[2,2]
.input 3 @256 s32[3,2]
.output 0 @320 s32[8,2]
vmovdqu8_load(n=8, dst=0, addr=128)
vmovdqu8_store(n=8, src=0, addr=320)
vmovdqu8_load(n=8, dst=0, addr=136)
vmovdqu8_store(n=8, src=0, addr=328)
vmovdqu8_load(n=8, dst=0, addr=144)
vmovdqu8_store(n=8, src=0, addr=336)
vmovdqu8_load(n=8, dst=0, addr=256)
vmovdqu8_store(n=8, src=0, addr=344)
vmovdqu8_load(n=8, dst=0, addr=264)
vmovdqu8_store(n=8, src=0, addr=352)
vmovdqu8_load(n=8, dst=0, addr=272)
vmovdqu8_store(n=8, src=0, addr=360)
vmovdqu8_load(n=8, dst=0, addr=192)
vmovdqu8_store(n=8, src=0, addr=368)
vmovdqu8_load(n=8, dst=0, addr=200)
vmovdqu8_store(n=8, src=0, addr=376)
