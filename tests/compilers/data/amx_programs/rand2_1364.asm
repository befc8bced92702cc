.target amx
.input 0 @64 bf16[4,2]
.input 1 @128 bf16[4,2]
.input 2 @192 bf16[3,2]
.output 0 @256 bf16[11,2]
vbroadcastss(dst=0, addr=64)
vmovdqu8_store(n=4, src=0, addr=256)
vbroadcastss(dst=0, addr=68)
vmovdqu8_store(n=4, src=0, addr=260)
vbroadcastss(dst=0, addr=72)
vmovdqu8_store(n=4, src=0, addr=264)
vbroadcastss(dst=0, addr=76)
vmovdqu8_store(n=4, src=0, addr=268)
vbroadcastss(dst=0, addr=128)
vmovdqu8_store(n=4, src=0, addr=272)
vbroadcastss(dst=0, addr=132)
vmovdqu8_store(n=4, src=0, addr=276)
vbroadcastss(dst=0, addr=136)
vmovdqu8_store(n=4, src=0, addr=280)
vbroadcastss(dst=0, addr=140)
vmovdqu8_store(n=4, src=0, addr=284)
vbroadcastss(dst=0, addr=192)
vmovdqu8_store(n=4, src=0, addr=288)
vbroadcastss(dst=0, addr=196)
vmovdqu8_store(n=4, src=0, addr=292)
vbroadcastss(dst=0, addr=200)
vmovdqu8_store(n=4, src=0, addr=296)
