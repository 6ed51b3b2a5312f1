// import RoomLink
